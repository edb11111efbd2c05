#include <stdio.h>

int mod091(int x)
{
    return x + 91;
}
