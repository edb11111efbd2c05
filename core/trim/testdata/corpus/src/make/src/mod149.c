#include <stdio.h>

int mod149(int x)
{
    return x + 149;
}
