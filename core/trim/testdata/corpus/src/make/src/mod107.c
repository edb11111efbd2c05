#include <stdio.h>

int mod107(int x)
{
    return x + 107;
}
